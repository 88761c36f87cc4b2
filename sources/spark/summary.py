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

from .parse import ExecutorInfo, RunningTask, SparkTask, StageEnd

#: A task ending this close after another's launch had already freed its slot.
OVERLAP_MS = 100
#: A stage name (its call site, `count at /path/job.py:61`) is shown in at most this many characters.
STAGE_NAME_CHARS = 80
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
        "start": t.launch_ms / 1000.0, "end": t.finish_ms / 1000.0,
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
    time so far, `end` None, `running` true. Options: `min_ratio`, `min_mad_score` (the others are ignored)."""
    from latencymap.analysis.stragglers import already_slow

    rule = {k: v for k, v in options.items() if k in ("min_ratio", "min_mad_score")}
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
            "start": r.launch_ms / 1000.0, "end": None, "ratio": ratio if np.isfinite(ratio) else None,
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


def stage_summary(stage: int, attempt: int, tasks: list[SparkTask], cores: int | None = None,
                  ends: dict[tuple[int, int], StageEnd] | None = None, cold: set[int] | None = None,
                  stragglers: set[int] | None = None, name: str | None = None,
                  running: list[RunningTask] | None = None, now_ms: int | None = None) -> dict[str, Any]:
    """Task attempts, median, p99, max, skew (max / median) and the other skew metrics (analysis/skew.py) of a
    stage attempt; the skew of its other tasks when warm-up tasks (`cold`, the first wave) that are not
    `stragglers` (task ids) are left out (`warmup_tasks` left out, `skew_after_warmup`, `max_after_warmup_s`:
    None when none is, or fewer than MIN_GROUP tasks are left); how many attempts succeeded, failed, were killed or
    speculative; and how the stage ended (`status`: "complete", "failed", "unfinished" when no end is known,
    None when `ends` is None: the source cannot tell). `name`: the stage's name in the log (shown by `stage_name`).
    `running`: its tasks launched with no end logged, seen running until `now_ms`: counted (`running`, the longest
    `running_max_s`), their cores busy in the wall and waste; the durations are those of the tasks that ended.

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
                      float(sum(so_far)))
    for key in ("wall_s", "task_time_s", "wasted_core_s"):  # milliseconds above
        if skew[key] is not None:
            skew[key] = skew[key] / 1000.0
    warm = warmup_mask(tasks, cold, cores) & np.array([t.task_id not in (stragglers or ()) for t in tasks], dtype=bool)
    rest = np.sort(np.array([t.duration_ms for t, w in zip(tasks, warm, strict=True) if not w],
                            dtype=np.float64)) / 1000.0
    after = warm.any() and rest.size >= MIN_GROUP and median_of(rest) > 0
    end = (ends or {}).get((stage, attempt))
    status = None if ends is None else "unfinished" if end is None else "complete" if end.completed else "failed"
    return {
        "stage": stage, "attempt": attempt, "name": stage_name(name), "tasks": len(tasks),
        "median_s": median, "p99_s": round(float(np.quantile(ms, 0.99)) / 1000.0, 6), "max_s": float(d[-1]),
        **skew,
        "warmup_tasks": int(warm.sum()),
        "skew_after_warmup": float(rest[-1] / median_of(rest)) if after else None,
        "max_after_warmup_s": float(rest[-1]) if after else None,
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
                    running: list[RunningTask] | None = None, now_ms: int | None = None) -> list[dict[str, Any]]:
    """One summary per stage attempt, in stage order (`ends`, `cold`, `stragglers`, stage `names`, `running`
    tasks seen until `now_ms`: see `stage_summary`)."""
    groups: dict[tuple[int, int], list[SparkTask]] = defaultdict(list)
    for t in tasks:
        groups[(t.stage, t.stage_attempt)].append(t)
    live: dict[tuple[int, int], list[RunningTask]] = defaultdict(list)
    for r in running or ():
        live[(r.stage, r.stage_attempt)].append(r)
    return [stage_summary(s, a, groups[(s, a)], (cores or {}).get((s, a)), ends, cold, stragglers,
                          (names or {}).get(s), live.get((s, a)), now_ms)
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
    return {"stragglers": [s for s in found if include_warmup or not s["warmup"]],
            "warmup": [s for s in found if s["warmup"]],
            "stages": stage_summaries(tasks, cores, ends, cold, slow, names, running, now)}
