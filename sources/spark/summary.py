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
from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from latencymap.core.percentiles import median_of

from .parse import ExecutorInfo, SparkTask, StageEnd

#: A task ending this close after another's launch had already freed its slot.
OVERLAP_MS = 100


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
        "warmup": warmup, "warmup_reason": reason,
    }


def warmup_mask(tasks: list[SparkTask], cold: set[int] | None = None, cores: int | None = None) -> np.ndarray:
    """Which of a stage attempt's tasks are warm-up as the straggler analysis sees them: cold, or in the stage's
    first wave (at most `cores` of them)."""
    from latencymap.analysis.stragglers import first_wave

    items = straggler_items(tasks, cold)
    return first_wave(items, cores) | np.array([i.cold for i in items], dtype=bool)


def stage_summary(stage: int, attempt: int, tasks: list[SparkTask], cores: int | None = None,
                  ends: dict[tuple[int, int], StageEnd] | None = None, cold: set[int] | None = None,
                  stragglers: set[int] | None = None) -> dict[str, Any]:
    """Task attempts, median, p99, max, skew (max / median) and the other skew metrics (analysis/skew.py) of a
    stage attempt; the skew of its other tasks when warm-up tasks (`cold`, the first wave) that are not
    `stragglers` (task ids) are left out (`warmup_tasks` left out, `skew_after_warmup`, `max_after_warmup_s`:
    None when none is, or fewer than MIN_GROUP tasks are left); how many attempts succeeded, failed, were killed or
    speculative; and how the stage ended (`status`: "complete", "failed", "unfinished" when no end is known,
    None when `ends` is None: the source cannot tell)."""
    from latencymap.analysis.skew import stage_skew
    from latencymap.analysis.stragglers import MIN_GROUP

    d = np.sort(np.array([t.duration_ms for t in tasks], dtype=np.float64)) / 1000.0
    median = float(median_of(d))
    skew = stage_skew(d, np.array([t.launch_ms for t in tasks]) / 1000.0,
                      np.array([t.finish_ms for t in tasks]) / 1000.0, cores)
    warm = warmup_mask(tasks, cold, cores) & np.array([t.task_id not in (stragglers or ()) for t in tasks], dtype=bool)
    rest = np.sort(np.array([t.duration_ms for t, w in zip(tasks, warm, strict=True) if not w],
                            dtype=np.float64)) / 1000.0
    after = warm.any() and rest.size >= MIN_GROUP and median_of(rest) > 0
    end = (ends or {}).get((stage, attempt))
    status = None if ends is None else "unfinished" if end is None else "complete" if end.completed else "failed"
    return {
        "stage": stage, "attempt": attempt, "tasks": len(tasks),
        "median_s": median, "p99_s": float(np.quantile(d, 0.99)), "max_s": float(d[-1]),
        **skew,
        "warmup_tasks": int(warm.sum()),
        "skew_after_warmup": float(rest[-1] / median_of(rest)) if after else None,
        "max_after_warmup_s": float(rest[-1]) if after else None,
        "succeeded": sum(not t.failed and not t.killed for t in tasks),
        "failed": sum(t.failed for t in tasks), "killed": sum(t.killed for t in tasks),
        "speculative": sum(t.speculative for t in tasks),
        "num_tasks": end.tasks if end is not None else None,
        "status": status, "failure": end.failure if end is not None else None,
    }


def stage_summaries(tasks: Iterable[SparkTask], cores: dict[tuple[int, int], int] | None = None,
                    ends: dict[tuple[int, int], StageEnd] | None = None, cold: set[int] | None = None,
                    stragglers: set[int] | None = None) -> list[dict[str, Any]]:
    """One summary per stage attempt, in stage order (`ends`, `cold`, `stragglers`: see `stage_summary`)."""
    groups: dict[tuple[int, int], list[SparkTask]] = defaultdict(list)
    for t in tasks:
        groups[(t.stage, t.stage_attempt)].append(t)
    return [stage_summary(s, a, groups[(s, a)], (cores or {}).get((s, a)), ends, cold, stragglers)
            for s, a in sorted(groups)]


def spark_analysis(tasks: list[SparkTask], executors: dict[str, ExecutorInfo] | None = None,
                   include_warmup: bool = False, all_tasks: list[SparkTask] | None = None,
                   ends: dict[tuple[int, int], StageEnd] | None = None, **options: Any) -> dict[str, Any]:
    """What `report --format json` adds for Spark: `stragglers`, `warmup` (kept apart) and `stages`.

    `all_tasks` (default `tasks`): every task of the application, when `tasks` keeps only some stages, so
    that warm-up is placed where it happened. `ends`: how stage attempts ended (None: the source cannot tell).
    """
    cold, cores = cold_tasks(all_tasks if all_tasks is not None else tasks, executors), stage_cores(tasks, executors)
    found = find_task_stragglers(tasks, cold, cores, include_warmup=True, **options)
    slow = {s["task_id"] for s in found if not s["warmup"]}
    return {"stragglers": [s for s in found if include_warmup or not s["warmup"]],
            "warmup": [s for s in found if s["warmup"]], "stages": stage_summaries(tasks, cores, ends, cold, slow)}
