"""Straggler tasks (through `latencymap.analysis.stragglers`), warm-up, and per-stage summaries with skew.

Warm-up from the event log: PySpark starts a Python worker the first time an executor runs more tasks at
once than it has workers (the first task on each of its slots; ~2 s in local mode), so a task is *cold* when
it raises its executor's concurrency to a level not reached before, up to the executor's `Total Cores`
(SparkListenerExecutorAdded). Concurrency at a task's launch counts the executor's tasks still running
then, a task ending within `OVERLAP_MS` of the launch counting as ended (Spark launches the next task a few
ms before it logs the end of the one whose slot it takes). Idle workers are reused; that PySpark kills them
after a minute idle is not modelled. A stage's first wave is also capped at the cores of the executors that
ran it. Cold and first-wave tasks are judged against their wave (see analysis/stragglers.py) and listed
with `warmup: true` only with `--include-warmup`; `"warmup"` always lists them apart.
"""

from __future__ import annotations

import heapq
import re
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from latencymap.core.percentiles import median_of
from latencymap.core.sanitize import clean_label, cut_label

from .parse import AppInfo, ExecutorInfo, RunningTask, SparkTask, StageEnd

#: A task ending this close after another's launch had already freed its slot.
OVERLAP_MS = 100
#: A stage name (its call site, `count at /path/job.py:61`) is shown in at most this many characters.
STAGE_NAME_CHARS = 80
#: An executor is slow in a stage when its median task (warm-up left out) is at least this many times the median of
#: the other executors' tasks there, over at least SLOW_EXECUTOR_TASKS tasks of its own and MIN_GROUP of the others'
#: (`analysis.stragglers`: fewer have no meaningful median), and when more than half of its tasks (SLOW_EXECUTOR_TASKS
#: at least) also took this many times the median of the others' tasks running at the same time (`concurrent_ratios`):
#: an executor whose only core a straggler held ran its tasks only while the stage's others did, not after, when the
#: others' tasks ran alone and faster: its median and theirs differ, its tasks and theirs at the time do not.
SLOW_EXECUTOR_RATIO = 2.0
SLOW_EXECUTOR_TASKS = 2
#: The folders of a call site's file (`at /path/to/job.py:61`): the file and line say where.
_CALL_SITE_DIRS = re.compile(r"(?<= at )\S*/(?=[^/\s]+:\d+)")


def stage_name(name: str | None) -> str | None:
    """A stage's name as shown: its call site's file without folders, cut in the middle to STAGE_NAME_CHARS (names
    that differ at either end stay apart); None for no name."""
    if name is None or not name.strip():
        return None
    return cut_label(clean_label(_CALL_SITE_DIRS.sub("", name.strip())), STAGE_NAME_CHARS)


def group_of(task: SparkTask) -> str:
    """Stragglers are judged within a stage attempt."""
    return f"{task.stage}.{task.stage_attempt}"


def cold_tasks(tasks: Iterable[SparkTask], executors: dict[str, ExecutorInfo] | None = None) -> set[int]:
    """Task ids that ran cold: each raised its executor's concurrency to a new high, up to its cores."""
    by_executor: dict[str, list[SparkTask]] = defaultdict(list)
    for t in tasks:
        by_executor[t.executor].append(t)
    cold: set[int] = set()
    for executor, members in by_executor.items():
        info = (executors or {}).get(executor)
        cap = info.cores if info is not None and info.cores else None
        running: list[int] = []
        high = 0
        for t in sorted(members, key=lambda t: (t.launch_ms, t.task_id)):
            while running and running[0] <= t.launch_ms + OVERLAP_MS:
                heapq.heappop(running)
            level = len(running) + 1
            if level > high and (cap is None or level <= cap):
                cold.add(t.task_id)
                high = level
            heapq.heappush(running, t.finish_ms)
    return cold


def stage_cores(tasks: Iterable[SparkTask], executors: dict[str, ExecutorInfo] | None = None
                ) -> dict[tuple[int, int], int]:
    """Cores of the executors that ran each stage attempt, where every one of them is known."""
    used: dict[tuple[int, int], set[str]] = defaultdict(set)
    for t in tasks:
        used[(t.stage, t.stage_attempt)].add(t.executor)
    out = {}
    for key, names in used.items():
        cores = [(executors or {}).get(n) for n in names]
        if all(c is not None and c.cores for c in cores):
            out[key] = sum(c.cores for c in cores if c is not None and c.cores)
    return out


def executor_spans(tasks: Iterable[SparkTask], executors: dict[str, ExecutorInfo] | None
                   ) -> list[tuple[int, float | None, float | None]] | None:
    """The cores of the executors that ran `tasks`, each as (cores, added, removed) in epoch ms (None: not logged),
    for `stage_skew`; None unless every one's cores are known."""
    infos = [(executors or {}).get(name) for name in {t.executor for t in tasks}]
    if not infos or not all(i is not None and i.cores for i in infos):
        return None
    return [(i.cores, i.added_ms, i.removed_ms) for i in infos if i is not None and i.cores]


def straggler_items(tasks: Iterable[SparkTask], cold: set[int] | None = None) -> list[Any]:
    """Tasks as the straggler API's Items: key = task id, group = stage attempt, wall times in seconds."""
    from latencymap.analysis.stragglers import Item

    cold = cold or set()
    return [Item(str(t.task_id), group_of(t), t.duration_ms / 1000.0, t.launch_ms / 1000.0, t.finish_ms / 1000.0,
                 t.task_id in cold) for t in tasks]


def find_task_stragglers(tasks: list[SparkTask], cold: set[int] | None = None,
                         cores: dict[tuple[int, int], int] | None = None, **options: Any) -> list[dict[str, Any]]:
    """Straggler tasks as report objects, slowest ratio first (options go to `find_stragglers`)."""
    from latencymap.analysis.stragglers import find_stragglers  # the single call site of the straggler API

    by_id = {(group_of(t), str(t.task_id)): t for t in tasks}
    slots = {f"{s}.{a}": n for (s, a), n in (cores or {}).items()}
    found = find_stragglers(straggler_items(tasks, cold), slots=slots, **options)
    return [straggler_json(by_id[(s.item.group, s.item.key)], s.ratio, s.group_median_s, s.warmup,
                           s.warmup_reason, s.reference_s, s.reference) for s in found]


def straggler_json(t: SparkTask, ratio: float, median_s: float, warmup: bool = False,
                   reason: str | None = None, reference_s: float | None = None,
                   reference: str = "median") -> dict[str, Any]:
    """One straggler in the report's shape, plus its flags: `ratio` is `duration_s / reference_s`, the reference
    being the stage median (`reference: "median"`) or the fastest task of its warm-up wave (`"wave"`)."""
    return {
        "stage": t.stage, "attempt": t.stage_attempt, "index": t.index, "task_id": t.task_id,
        "task_attempt": t.attempt, "executor": t.executor, "host": t.host, "duration_s": t.duration_ms / 1000.0,
        "start": t.launch_ms / 1000.0, "end": t.finish_ms / 1000.0, "read_bytes": t.read_bytes,
        "ratio": float(ratio) if np.isfinite(ratio) else None,
        "reference_s": median_s if reference_s is None else reference_s, "reference": reference,
        "stage_median_s": median_s,
        "failed": t.failed, "killed": t.killed, "speculative": t.speculative, "end_reason": t.reason,
        "warmup": warmup, "warmup_reason": reason, "running": False,
    }


def running_stragglers(tasks: list[SparkTask], running: list[RunningTask], now_ms: int,
                       **options: Any) -> list[dict[str, Any]]:
    """Tasks still running (no end logged) that are stragglers already: their time so far (to `now_ms`, the log's
    last time) is one against the tasks of their stage attempt that ended (`already_slow`); `duration_s` is that
    time so far, `end` None, `running` true. Options: `min_ratio`, `min_mad_score`, `min_duration_s` (the others are
    ignored)."""
    from latencymap.analysis.stragglers import already_slow

    rule = {k: v for k, v in options.items() if k in ("min_ratio", "min_mad_score", "min_duration_s")}
    ended: dict[str, list[int]] = defaultdict(list)
    for t in tasks:
        ended[group_of(t)].append(t.duration_ms)
    out = []
    for r in running:
        so_far = max(0, now_ms - r.launch_ms)
        slow = already_slow(np.array(ended.get(f"{r.stage}.{r.stage_attempt}", []), dtype=np.float64) / 1000.0,
                            so_far / 1000.0, **rule)
        if slow is None:
            continue
        ratio, median = slow
        out.append({
            "stage": r.stage, "attempt": r.stage_attempt, "index": r.index, "task_id": r.task_id,
            "task_attempt": r.attempt, "executor": r.executor, "host": r.host, "duration_s": so_far / 1000.0,
            "start": r.launch_ms / 1000.0, "end": None, "read_bytes": None,
            "ratio": ratio if np.isfinite(ratio) else None,
            "reference_s": median, "reference": "median", "stage_median_s": median,
            "failed": False, "killed": False, "speculative": r.speculative, "end_reason": None,
            "warmup": False, "warmup_reason": None, "running": True,
        })
    return out


def warmup_mask(tasks: list[SparkTask], cold: set[int] | None = None, cores: int | None = None) -> np.ndarray:
    """Which of a stage attempt's tasks are warm-up as the straggler analysis sees them: cold, or in the stage's
    first wave (at most `cores` of them)."""
    from latencymap.analysis.stragglers import first_wave

    items = straggler_items(tasks, cold)
    return first_wave(items, cores) | np.array([i.cold for i in items], dtype=bool)


def slow_executors(tasks: list[SparkTask], warm: np.ndarray, stragglers: set[int] | None = None
                   ) -> list[dict[str, Any]]:
    """The executors slow in a stage attempt (see SLOW_EXECUTOR_RATIO), slowest first: each with its tasks and
    median, the others' (`others_tasks`, `others_median_s`), `ratio` and how many of the stage's `stragglers` (task
    ids) it ran. Warm-up tasks (`warm`) are left out of the medians."""
    from latencymap.analysis.stragglers import MIN_GROUP

    kept = [t for t, w in zip(tasks, warm, strict=True) if not w and not t.failed and not t.killed]
    by_executor: dict[str, list[int]] = defaultdict(list)
    for t in kept:
        by_executor[t.executor].append(t.duration_ms)
    if len(by_executor) < 2:
        return []
    out = []
    for executor, mine in by_executor.items():
        others = [t.duration_ms for t in kept if t.executor != executor]
        if len(mine) < SLOW_EXECUTOR_TASKS or len(others) < MIN_GROUP:
            continue
        median, usual = float(median_of(np.sort(np.array(mine, dtype=np.float64)))), \
            float(median_of(np.sort(np.array(others, dtype=np.float64))))
        if usual > 0 and median >= SLOW_EXECUTOR_RATIO * usual and \
                slow_at_the_time(concurrent_ratios([t for t in kept if t.executor == executor],
                                                   [t for t in kept if t.executor != executor])):
            out.append({"executor": executor, "tasks": len(mine), "median_s": median / 1000.0,
                        "others_tasks": len(others), "others_median_s": usual / 1000.0, "ratio": median / usual,
                        "stragglers": sum(t.executor == executor and t.task_id in (stragglers or ()) for t in tasks)})
    return sorted(out, key=lambda e: -e["ratio"])


def concurrent_ratios(mine: list[SparkTask], others: list[SparkTask]) -> np.ndarray:
    """Each of `mine` that ran while one of `others` did: its duration over the median duration of `others` running
    at the same time (any overlap of launch to finish)."""
    if not others:
        return np.empty(0)
    order = sorted(others, key=lambda t: t.launch_ms)
    launch = np.array([t.launch_ms for t in order], dtype=np.int64)
    finish = np.array([t.finish_ms for t in order], dtype=np.int64)
    took = finish - launch
    longest = int(took.max())
    out = []
    for t in mine:
        lo, hi = np.searchsorted(launch, t.launch_ms - longest), np.searchsorted(launch, t.finish_ms)
        during = took[lo:hi][finish[lo:hi] > t.launch_ms]
        usual = median_of(during) if during.size else 0.0
        if usual > 0:
            out.append(t.duration_ms / usual)
    return np.array(out, dtype=np.float64)


def slow_at_the_time(ratios: np.ndarray) -> bool:
    """Whether more than half of an executor's `concurrent_ratios` (and SLOW_EXECUTOR_TASKS) reach
    SLOW_EXECUTOR_RATIO: one straggler of its own does not make an executor slow."""
    return ratios.size >= SLOW_EXECUTOR_TASKS and float(np.sort(ratios)[(ratios.size - 1) // 2]) >= SLOW_EXECUTOR_RATIO


def overlap_ms(tasks: list[SparkTask], executors: dict[str, ExecutorInfo] | None) -> float | None:
    """Task time beyond the cores of the executors that ran it (ms): the time-integral of each executor's tasks
    running past its `Total Cores` (Spark counts in a task's time the lag before its end is logged, so a 1-core
    executor's tasks overlap); None when an executor's cores are not known."""
    from latencymap.analysis.skew import overcommitted

    caps = {}
    for name in {t.executor for t in tasks}:
        info = (executors or {}).get(name)
        if info is None or not info.cores:
            return None
        caps[name] = info.cores
    return overcommitted(np.array([t.launch_ms for t in tasks], dtype=np.float64),
                         np.array([t.finish_ms for t in tasks], dtype=np.float64),
                         [t.executor for t in tasks], caps)


def stage_summary(stage: int, attempt: int, tasks: list[SparkTask], cores: int | None = None,
                  ends: dict[tuple[int, int], StageEnd] | None = None, cold: set[int] | None = None,
                  stragglers: set[int] | None = None, name: str | None = None,
                  running: list[RunningTask] | None = None, now_ms: int | None = None,
                  executors: dict[str, ExecutorInfo] | None = None) -> dict[str, Any]:
    """Task attempts, median, p99, max, skew (max / median) and the other skew metrics (analysis/skew.py) of a
    stage attempt; the skew of its other tasks when warm-up tasks (`cold`, the first wave) that are not
    `stragglers` (task ids) are left out (`warmup_tasks` left out, `skew_after_warmup`, `max_after_warmup_s`:
    None when none is, or fewer than MIN_GROUP tasks are left); how many attempts succeeded, failed, were killed or
    speculative; and how the stage ended (`status`: "complete", "failed", "unfinished" when no end is known,
    None when `ends` is None: the source cannot tell). `name`: the stage's name in the log (shown by `stage_name`).
    `running`: its tasks launched with no end logged, seen running until `now_ms`: counted (`running`, the longest
    `running_max_s`), their cores busy in the wall and waste; the durations are those of the tasks that ended.
    `executors` (their cores) gives `overlap_core_s`, the task time past the executors' cores (`overlap_ms`), and
    bounds each executor's cores in `available_core_s` to the time it was there (added to removed);
    `slow_executors` lists the executors slow in the stage, `read_median_bytes` is the median task's bytes read.

    Times are computed in the source's milliseconds and given in seconds: no float noise from epoch seconds."""
    from latencymap.analysis.skew import stage_skew
    from latencymap.analysis.stragglers import MIN_GROUP

    ms = np.sort(np.array([t.duration_ms for t in tasks], dtype=np.float64))
    d = ms / 1000.0
    median = float(median_of(d))
    live = running if running and now_ms is not None else []
    so_far = [max(0, now_ms - r.launch_ms) for r in live] if now_ms is not None else []
    skew = stage_skew(ms, np.array([t.launch_ms for t in tasks] + [r.launch_ms for r in live], dtype=np.float64),
                      np.array([t.finish_ms for t in tasks] + [now_ms] * len(live), dtype=np.float64), cores,
                      float(sum(so_far)), executor_spans(tasks, executors) if cores else None)
    for key in ("wall_s", "task_time_s", "available_core_s", "wasted_core_s"):  # milliseconds above
        if skew[key] is not None:
            skew[key] = skew[key] / 1000.0
    warm = warmup_mask(tasks, cold, cores) & np.array([t.task_id not in (stragglers or ()) for t in tasks], dtype=bool)
    rest = np.sort(np.array([t.duration_ms for t, w in zip(tasks, warm, strict=True) if not w],
                            dtype=np.float64)) / 1000.0
    after = warm.any() and rest.size >= MIN_GROUP and median_of(rest) > 0
    read = np.sort(np.array([t.read_bytes for t in tasks if t.read_bytes is not None], dtype=np.float64))
    over = overlap_ms(tasks, executors) if cores else None
    end = (ends or {}).get((stage, attempt))
    status = None if ends is None else "unfinished" if end is None else "complete" if end.completed else "failed"
    return {
        "stage": stage, "attempt": attempt, "name": stage_name(name), "tasks": len(tasks),
        "median_s": median, "p99_s": round(float(np.quantile(ms, 0.99)) / 1000.0, 6), "max_s": float(d[-1]),
        **skew,
        "warmup_tasks": int(warm.sum()),
        "skew_after_warmup": float(rest[-1] / median_of(rest)) if after else None,
        "max_after_warmup_s": float(rest[-1]) if after else None,
        "overlap_core_s": over / 1000.0 if over is not None else None,
        "slow_executors": slow_executors(tasks, warm, stragglers),
        "read_median_bytes": float(median_of(read)) if read.size else None,
        "succeeded": sum(not t.failed and not t.killed for t in tasks),
        "failed": sum(t.failed for t in tasks), "killed": sum(t.killed for t in tasks),
        "speculative": sum(t.speculative for t in tasks),
        "running": len(live), "running_max_s": max(so_far) / 1000.0 if so_far else None,
        "num_tasks": end.tasks if end is not None else None,
        "status": status, "failure": end.failure if end is not None else None,
    }


def stage_summaries(tasks: Iterable[SparkTask], cores: dict[tuple[int, int], int] | None = None,
                    ends: dict[tuple[int, int], StageEnd] | None = None, cold: set[int] | None = None,
                    stragglers: set[int] | None = None, names: dict[int, str] | None = None,
                    running: list[RunningTask] | None = None, now_ms: int | None = None,
                    executors: dict[str, ExecutorInfo] | None = None) -> list[dict[str, Any]]:
    """One summary per stage attempt, in stage order (`ends`, `cold`, `stragglers`, stage `names`, `running`
    tasks seen until `now_ms`, `executors`: see `stage_summary`)."""
    groups: dict[tuple[int, int], list[SparkTask]] = defaultdict(list)
    for t in tasks:
        groups[(t.stage, t.stage_attempt)].append(t)
    live: dict[tuple[int, int], list[RunningTask]] = defaultdict(list)
    for r in running or ():
        live[(r.stage, r.stage_attempt)].append(r)
    return [stage_summary(s, a, groups[(s, a)], (cores or {}).get((s, a)), ends, cold, stragglers,
                          (names or {}).get(s), live.get((s, a)), now_ms, executors)
            for s, a in sorted(groups)]


def last_time_ms(tasks: Iterable[SparkTask], running: Iterable[RunningTask]) -> int | None:
    """The log's last time as its tasks say it: the latest end, or launch of a task still running."""
    return max([t.finish_ms for t in tasks] + [r.launch_ms for r in running], default=None)


def spark_analysis(tasks: list[SparkTask], executors: dict[str, ExecutorInfo] | None = None,
                   include_warmup: bool = False, all_tasks: list[SparkTask] | None = None,
                   ends: dict[tuple[int, int], StageEnd] | None = None, names: dict[int, str] | None = None,
                   running: list[RunningTask] | None = None, **options: Any) -> dict[str, Any]:
    """What `report --format json` adds for Spark: `stragglers`, `warmup` (kept apart) and `stages`.

    `all_tasks` (default `tasks`): every task of the application, when `tasks` keeps only some stages, so
    that warm-up is placed where it happened. `ends`: how stage attempts ended (None: the source cannot tell).
    `names`: stage names by stage id. `running`: tasks launched with no end logged (a running or cut log), seen
    running until the log's last time: those already stragglers are listed (`running: true`, their time so far),
    and their cores are busy in their stage's waste.
    """
    every = all_tasks if all_tasks is not None else tasks
    cold, cores = cold_tasks(every, executors), stage_cores(tasks, executors)
    now = last_time_ms(every, running or ())
    found = find_task_stragglers(tasks, cold, cores, include_warmup=True, **options)
    if running and now is not None:
        found += running_stragglers(tasks, running, now, **options)
        found.sort(key=lambda s: (s["warmup"], -(s["ratio"] if s["ratio"] is not None else float("inf"))))
    slow = {s["task_id"] for s in found if not s["warmup"] and not s["running"]}
    stages = stage_summaries(tasks, cores, ends, cold, slow, names, running, now, executors)
    explain_stragglers(found, stages)
    return {"stragglers": [s for s in found if include_warmup or not s["warmup"]],
            "warmup": [s for s in found if s["warmup"]], "stages": stages}


def explain_stragglers(found: list[dict[str, Any]], stages: list[dict[str, Any]]) -> None:
    """What the log says of each straggler's cause, added to it: `slow_executor` (true when it ran on an executor
    slow in its stage: `slow_executors`), `read_ratio` (its bytes read over its stage's median task's, None when
    either is not logged or the median is 0) and the `cause` they give (`known_cause`: "executor", "input", None)."""
    from latencymap.analysis.stragglers import known_cause

    by_stage = {(st["stage"], st["attempt"]): st for st in stages}
    for s in found:
        st = by_stage.get((s["stage"], s["attempt"])) or {}
        s["slow_executor"] = any(e["executor"] == s["executor"] for e in st.get("slow_executors") or ())
        usual, read = st.get("read_median_bytes"), s.get("read_bytes")
        s["read_ratio"] = read / usual if read is not None and usual else None
        s["cause"] = known_cause(s)


def application_time(app: AppInfo, jobs: dict[int, list[int | None]], last_ms: int | None) -> dict[str, Any] | None:
    """The application's time and how much of it no job ran (Sparklens' driver time: the driver's own work, start-up,
    planning, Python code between jobs, collecting results): `duration_s` (its start to its end, or to `last_ms`,
    the log's last time, when no end is logged: `ended` false), `jobs`, `in_jobs_s` (the time some job ran; a job
    with no end logged runs to the end), `outside_jobs_s`, split into `before_jobs_s` (start-up, to the first job),
    `between_jobs_s` and `after_jobs_s`; the longest stretch between jobs (`longest_between_s`, before job
    `longest_before_job`). None without the application's start or any job's."""
    start = app.start_ms
    end = app.end_ms if app.end_ms else last_ms
    if start is None or end is None or end < start:
        return None
    spans = sorted((min(end, max(start, s)), min(end, e if e is not None else end), job)
                   for job, (s, e) in jobs.items() if s is not None)
    if not spans:
        return None
    busy, at, between = 0, spans[0][0], 0
    longest: tuple[int, int | None] = (0, None)
    for s, e, job in spans:
        if s > at:
            between += s - at
            if s - at > longest[0]:
                longest = (s - at, job)
        busy += max(0, e - max(s, at))
        at = max(at, e)
    return {"duration_s": (end - start) / 1000.0, "jobs": len(spans), "in_jobs_s": busy / 1000.0,
            "outside_jobs_s": (end - start - busy) / 1000.0, "before_jobs_s": (spans[0][0] - start) / 1000.0,
            "between_jobs_s": between / 1000.0, "after_jobs_s": (end - at) / 1000.0,
            "longest_between_s": longest[0] / 1000.0, "longest_before_job": longest[1],
            "ended": app.end_ms is not None}
