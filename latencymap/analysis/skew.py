"""Stage skew: how unevenly a group of parallel tasks used its cores (the metrics Sparklens and Dr. Elephant give).

For the tasks of one stage (durations, launch and finish times, `cores` available to it):

- `skew` = max task / median task (Dr. Elephant's task-duration skew; > 2-3 says one task does more work);
- `max_over_wall` = max task / stage wall time (Sparklens' "task-stage skew": near 1, the stage lasted as
  long as its slowest task, so that task *is* the stage's critical path);
- `wall_s` = last finish - first launch; `task_time_s` = sum of task durations;
- `available_core_s` = cores x wall time, each core counted only while it was there (an executor added or removed
  during the stage: `spans`);
- `wasted_core_s` = available core time - task time: core-seconds the stage held but did not use (cores waiting
  for the slowest task, or too few tasks for the cores); `utilisation` = task time / available core time.

`cores` unknown (no ExecutorAdded event, a REST source) leaves the last three null. `utilisation` is task time over
cores x wall as the source gives them: above 1 when task times overlap past the cores (Spark's include the lag before
a task's end is logged); `wasted_core_s` is then 0, and `overcommitted` measures the overlap.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from latencymap.core.percentiles import median_of


def overcommitted(starts: np.ndarray, ends: np.ndarray, groups: list[str], caps: dict[str, int]) -> float:
    """Task time past the cores: the time-integral, over each group (executor) of tasks, of how many of its tasks ran
    beyond its `caps` cores at once (in the unit of `starts` and `ends`)."""
    total = 0.0
    for group, cap in caps.items():
        mine = np.array([g == group for g in groups], dtype=bool)
        times = np.concatenate([starts[mine], ends[mine]])
        steps = np.concatenate([np.ones(int(mine.sum())), -np.ones(int(mine.sum()))])
        order = np.lexsort((steps, times))  # at one time, ends before starts: touching tasks do not overlap
        times, level = times[order], np.cumsum(steps[order])
        total += float(np.sum(np.maximum(level[:-1] - cap, 0.0) * np.diff(times)))
    return total


def stage_skew(durations_s: np.ndarray, starts_s: np.ndarray, ends_s: np.ndarray,
               cores: int | None = None, running_s: float = 0.0,
               spans: Sequence[tuple[int, float | None, float | None]] | None = None) -> dict[str, Any]:
    """Skew metrics of one stage's tasks (see the module docstring); seconds (any one unit: the times come out in
    it). `running_s`: the time so far of tasks still running, whose cores are busy (their starts, and the time
    they were seen running, are among `starts_s` and `ends_s`; their time so far is not among `durations_s`).
    `spans`: the `cores` as (cores, there from, there to), None for since before or until after the stage's wall
    (default: all of them all along)."""
    d = np.asarray(durations_s, dtype=np.float64)
    if d.size == 0:
        return {"skew": None, "max_over_wall": None, "wall_s": 0.0, "task_time_s": 0.0, "cores": cores,
                "available_core_s": None, "wasted_core_s": None, "utilisation": None}
    median, longest = float(median_of(d)), float(d.max())
    start, end = float(np.min(starts_s)), float(np.max(ends_s))
    wall = end - start
    busy = float(d.sum()) + running_s
    held = None if not cores else cores * wall if spans is None else float(sum(
        n * max(0.0, min(end, end if until is None else until) - max(start, start if since is None else since))
        for n, since, until in spans))
    return {
        "skew": longest / median if median > 0 else None,
        "max_over_wall": longest / wall if wall > 0 else None,
        "wall_s": wall,
        "task_time_s": busy,
        "cores": cores,
        "available_core_s": held,
        "wasted_core_s": max(0.0, held - busy) if held is not None else None,
        "utilisation": busy / held if held else None,
    }
