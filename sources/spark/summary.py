"""Straggler tasks (through `latencymap.analysis.stragglers`) and per-stage summaries, as report JSON."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from .parse import SparkTask


def group_of(task: SparkTask) -> str:
    """Stragglers are judged within a stage attempt."""
    return f"{task.stage}.{task.stage_attempt}"


def straggler_items(tasks: Iterable[SparkTask]) -> list[Any]:
    """Tasks as the straggler API's Items: key = task id, group = stage attempt, wall times in seconds."""
    from latencymap.analysis.stragglers import Item

    return [Item(str(t.task_id), group_of(t), t.duration_ms / 1000.0, t.launch_ms / 1000.0, t.finish_ms / 1000.0)
            for t in tasks]


def find_task_stragglers(tasks: list[SparkTask], **options: Any) -> list[dict[str, Any]]:
    """Straggler tasks as report objects, slowest ratio first (options go to `find_stragglers`)."""
    from latencymap.analysis.stragglers import find_stragglers  # the single call site of the straggler API

    by_id = {(group_of(t), str(t.task_id)): t for t in tasks}
    found = find_stragglers(straggler_items(tasks), **options)
    return [straggler_json(by_id[(s.item.group, s.item.key)], s.ratio, s.group_median_s, s.warmup) for s in found]


def straggler_json(t: SparkTask, ratio: float, median_s: float, warmup: bool = False) -> dict[str, Any]:
    """One straggler in the report's shape (issue 7), plus its flags."""
    return {
        "stage": t.stage, "attempt": t.stage_attempt, "index": t.index, "task_id": t.task_id,
        "task_attempt": t.attempt, "executor": t.executor, "host": t.host, "duration_s": t.duration_ms / 1000.0,
        "ratio": float(ratio) if np.isfinite(ratio) else None, "stage_median_s": median_s,
        "failed": t.failed, "killed": t.killed, "speculative": t.speculative, "warmup": warmup,
    }


def stage_summary(stage: int, attempt: int, tasks: list[SparkTask]) -> dict[str, Any]:
    """Tasks, median, p99, max and skew (max / median) of one stage attempt's task durations."""
    d = np.sort(np.array([t.duration_ms for t in tasks], dtype=np.float64)) / 1000.0
    median = float(np.median(d))
    return {
        "stage": stage, "attempt": attempt, "tasks": len(tasks),
        "median_s": median, "p99_s": float(np.quantile(d, 0.99)), "max_s": float(d[-1]),
        "skew": float(d[-1] / median) if median > 0 else None,
        "failed": sum(t.failed for t in tasks), "killed": sum(t.killed for t in tasks),
        "speculative": sum(t.speculative for t in tasks),
    }


def stage_summaries(tasks: Iterable[SparkTask]) -> list[dict[str, Any]]:
    """One summary per stage attempt, in stage order."""
    groups: dict[tuple[int, int], list[SparkTask]] = defaultdict(list)
    for t in tasks:
        groups[(t.stage, t.stage_attempt)].append(t)
    return [stage_summary(s, a, groups[(s, a)]) for s, a in sorted(groups)]


def spark_analysis(tasks: list[SparkTask], **options: Any) -> dict[str, Any]:
    """What `report --format json` adds for Spark: `stragglers` and `stages`."""
    return {"stragglers": find_task_stragglers(tasks, **options), "stages": stage_summaries(tasks)}
